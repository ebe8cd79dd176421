import json
forecast = get_forecast("Paris", 3)
text = json.dumps({"city": "Paris", "highs": [d["high"] for d in forecast]}, indent=2)
print(text)
len(text.splitlines())
