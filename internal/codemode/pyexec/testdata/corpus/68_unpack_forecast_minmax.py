fc = get_forecast("Paris", 3)
highs, lows = zip(*((d["high"], d["low"]) for d in fc))
{"max_high": max(highs), "min_low": min(lows), "avg_range": round(sum(h - l for h, l in zip(highs, lows)) / len(fc), 2)}
