cities = ["Paris", "Oslo", "Lima"]
temps = [get_weather(c)["temp_c"] for c in cities]
lines = [f"{i}. {c} {t}" for i, (c, t) in enumerate(zip(cities, temps), start=1)]
"\n".join(lines)
