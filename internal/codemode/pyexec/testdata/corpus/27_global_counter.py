calls = 0
def counted(city):
    global calls
    calls += 1
    return get_weather(city)["temp_c"]

temps = [counted(c) for c in ["Paris", "Paris", "Lima"]]
(calls, temps)
