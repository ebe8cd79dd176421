temps = [get_weather(c)["temp_c"] for c in ["Paris", "Oslo", "Cairo", "Lima"]]
{"sum": sum(t for t in temps if t > 10), "any_hot": any(t > 30 for t in temps), "all_above_zero": all(t > 0 for t in temps)}
