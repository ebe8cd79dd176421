for city in ["Oslo", "Sydney"]:
    if get_weather(city)["temp_c"] > 30:
        break
else:
    print("no hot city")
"done"
