class Portfolio:
    def __init__(self):
        self.holdings = {}

    def add(self, symbol, qty):
        self.holdings[symbol] = self.holdings.get(symbol, 0) + qty

    def value(self):
        return sum(get_stock_price(s)["price"] * q for s, q in self.holdings.items())

p = Portfolio()
p.add("AAPL", 10)
p.add("MSFT", 2)
p.add("AAPL", 5)
round(p.value(), 2)
