try:
    get_stock_price("XXX")
except ToolError as err:
    info = {"tool": err.tool, "message": err.message, "is_exception": isinstance(err, Exception)}
info
