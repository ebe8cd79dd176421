a = get_forecast("Oslo", days=3)
b = get_forecast(city="Oslo", days=3)
c = get_exchange_rate("GBP", quote="USD")["rate"]
{"same": a == b, "lows": [d["low"] for d in a], "rate": c}
