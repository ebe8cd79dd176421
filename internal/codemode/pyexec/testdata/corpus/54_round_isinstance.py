vals = [get_stock_price("AAPL")["price"], 3, "x", 2.675, None]
[round(v, 1) if isinstance(v, float) else v for v in vals if isinstance(v, (int, float))]
