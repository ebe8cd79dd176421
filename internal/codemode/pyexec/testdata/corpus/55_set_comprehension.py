skies = {get_weather(c)["sky"] for c in ["Paris", "Oslo", "Cairo", "Lima", "Tokyo", "Sydney"]}
sorted(skies)
