rates = {q: get_exchange_rate("USD", q)["rate"] for q in ["EUR", "JPY"]}
{k: round(100 * v, 1) for k, v in rates.items()}
