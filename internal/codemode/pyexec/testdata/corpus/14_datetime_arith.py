from datetime import datetime
log = get_text("log")
stamps = [datetime.strptime(line[:19], "%Y-%m-%d %H:%M:%S") for line in log.splitlines()]
(stamps[-1] - stamps[0]).total_seconds()
