mild = []
for c in ["Paris", "Oslo", "Cairo", "Lima", "Tokyo", "Sydney"]:
    t = get_weather(c)["temp_c"]
    if 15 <= t <= 25:
        mild.append(c)
mild
