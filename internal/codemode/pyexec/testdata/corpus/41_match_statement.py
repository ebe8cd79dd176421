def describe(w):
    match w:
        case {"sky": "rain", "temp_c": t} if t < 10:
            return "cold rain"
        case {"sky": "rain"}:
            return "rain"
        case {"sky": sky}:
            return sky
    return "?"

[describe(get_weather(c)) for c in ["Oslo", "Sydney", "Paris"]]
