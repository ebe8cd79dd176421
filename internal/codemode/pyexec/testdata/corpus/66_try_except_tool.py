results = {}
for city in ["Paris", "Atlantis", "Lima"]:
    try:
        results[city] = get_weather(city)["temp_c"]
    except ToolError as e:
        results[city] = f"error: {e.message}"
results
