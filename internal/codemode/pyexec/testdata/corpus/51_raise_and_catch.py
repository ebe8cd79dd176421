def check_price(symbol):
    p = get_stock_price(symbol)["price"]
    if p > 500:
        raise ValueError(f"{symbol} too expensive: {p}")
    return p

out = []
for s in ["AAPL", "NVDA", "MSFT"]:
    try:
        out.append(check_price(s))
    except ValueError as e:
        out.append(str(e))
out
