def fmt_price(symbol, digits=2, *, prefix="$", **extra):
    p = get_stock_price(symbol)["price"]
    tag = ",".join(f"{k}={v}" for k, v in sorted(extra.items()))
    return f"{prefix}{p:.{digits}f}" + (f" [{tag}]" if tag else "")

[fmt_price("MSFT"), fmt_price("GOOG", 0, prefix="USD "), fmt_price("AAPL", note="x", a=1)]
