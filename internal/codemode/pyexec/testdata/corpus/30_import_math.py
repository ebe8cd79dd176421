import math
prices = [get_stock_price(s)["price"] for s in ["AAPL", "MSFT", "GOOG"]]
mean = sum(prices) / len(prices)
sd = math.sqrt(sum((p - mean) ** 2 for p in prices) / len(prices))
{"mean": round(mean, 3), "sd": round(sd, 3), "ceil": math.ceil(mean), "pi": round(math.pi, 4)}
