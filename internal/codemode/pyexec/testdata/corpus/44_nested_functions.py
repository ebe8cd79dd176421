def fahrenheit(c):
    return c * 9 / 5 + 32

def describe(city):
    w = get_weather(city)
    def label(t):
        return "hot" if t > 30 else "cold" if t < 10 else "mild"
    return f"{city}: {fahrenheit(w['temp_c']):.0f}F ({label(w['temp_c'])})"

[describe(c) for c in ["Cairo", "Oslo", "Lima"]]
