import re
log = get_text("log")
errors = re.findall(r"ERROR (.+)", log)
times = re.findall(r"\d{2}:\d{2}:\d{2}", log)
{"errors": errors, "first": times[0], "last": times[-1]}
