total = 0
for s in ["AAPL", "GOOG"]:
    total += get_stock_price(s)["price"]
print(f"total={total}")
