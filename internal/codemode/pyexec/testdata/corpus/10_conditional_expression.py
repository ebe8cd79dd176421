w = get_weather("Sydney")
advice = "umbrella" if w["sky"] == "rain" else "sunglasses" if w["sky"] == "clear" else "jacket"
advice
