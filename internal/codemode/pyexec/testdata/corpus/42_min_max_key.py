cities = ["Paris", "Oslo", "Cairo", "Lima", "Tokyo", "Sydney"]
weather = {c: get_weather(c) for c in cities}
hottest = max(cities, key=lambda c: weather[c]["temp_c"])
driest = min(weather.values(), key=lambda w: w["humidity"])["city"]
(hottest, driest)
