rate = get_exchange_rate("USD", "EUR")["rate"]
principal = 1000
compounded = principal * (1 + 0.05) ** 10
{"eur": round(compounded * rate, 2), "square": 12 ** 2, "big": 2 ** 100}
