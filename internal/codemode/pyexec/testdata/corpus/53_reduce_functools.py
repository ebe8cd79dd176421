from functools import reduce
import operator
prices = [get_stock_price(s)["price"] for s in ["AAPL", "MSFT"]]
{"product": round(reduce(operator.mul, prices), 2), "sum": reduce(lambda a, b: a + b, prices, 0)}
