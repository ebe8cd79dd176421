hot = [w["city"] for c in ["Paris", "Cairo", "Tokyo"] if (w := get_weather(c))["temp_c"] >= 21]
hot
