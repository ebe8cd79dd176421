import itertools
cities = ["Paris", "Oslo", "Lima"]
pairs = list(itertools.combinations(cities, 2))
diffs = {f"{a}-{b}": abs(get_weather(a)["temp_c"] - get_weather(b)["temp_c"]) for a, b in pairs}
chunks = [list(g) for _, g in itertools.groupby(sorted([3, 1, 2, 3, 1]))]
{"diffs": diffs, "chunks": chunks}
