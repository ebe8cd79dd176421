from dataclasses import dataclass, field

@dataclass
class Order:
    id: str
    amount: float
    status: str = "pending"
    notes: list = field(default_factory=list)

orders = [Order(o["id"], o["amount"], o["status"]) for o in list_orders(1)]
shipped = [o for o in orders if o.status == "shipped"]
(len(shipped), sum(o.amount for o in shipped), repr(orders[1]))
