import statistics
temps = [get_weather(c)["temp_c"] for c in ["Paris", "Oslo", "Cairo", "Lima", "Tokyo", "Sydney"]]
{"mean": round(statistics.mean(temps), 2), "median": statistics.median(temps), "stdev": round(statistics.stdev(temps), 3)}
