prices = {s: get_stock_price(s)["price"] for s in ["AAPL", "MSFT"]}
rate = get_exchange_rate(base="USD", quote="EUR")["rate"]
in_eur = {s: round(p * rate, 2) for s, p in prices.items()}
print(f"Converted {len(in_eur)} prices at {rate}")
in_eur
