for city in ["Oslo", "Sydney", "Cairo", "Paris"]:
    if get_weather(city)["temp_c"] > 30:
        found = city
        break
else:
    found = None
found
