def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def flatten(x):
    if isinstance(x, list):
        return [z for y in x for z in flatten(y)]
    return [x]

{"fib": fib(20), "flat": flatten([1, [2, [3, [get_user(1)["id"]]]]])}
