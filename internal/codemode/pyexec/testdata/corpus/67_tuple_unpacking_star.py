first, *rest = [get_user(i)["name"] for i in (1, 2, 3)]
a, (b, c) = 1, (2, 3)
{"first": first, "rest": rest, "sum": a + b + c}
