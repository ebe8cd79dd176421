rows = [("Symbol", "Price")]
for s in ["AAPL", "NVDA"]:
    p = get_stock_price(s)
    rows.append((p["symbol"], f"{p['price']:>8.2f}"))
table = "\n".join(f"{a:<6} {b}" for a, b in rows)
print(table)
table.count("\n")
