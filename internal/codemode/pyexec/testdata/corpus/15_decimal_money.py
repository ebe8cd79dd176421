from decimal import Decimal, ROUND_HALF_UP
amounts = [Decimal(str(o["amount"])) for o in list_orders(1)]
total = sum(amounts, Decimal("0"))
str(total.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
