package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/codemode"
)

// stockTool is the tool the separate process serves.
var stockTool = codemode.Tool{
	Name: "stock_level", Doc: "Units in stock of a SKU: {sku, units, warehouse}. Fails for an unknown SKU.",
	Params: []codemode.Param{{Name: "sku", Type: codemode.TypeStr, Required: true}},
	Func: func(_ context.Context, args map[string]any) (any, error) {
		sku := args["sku"].(string)
		units, ok := map[string]int{"A-100": 12, "B-200": 40, "C-300": 3}[sku]
		if !ok {
			return nil, fmt.Errorf("unknown SKU %q", sku)
		}
		return map[string]any{"sku": sku, "units": units, "warehouse": "north"}, nil
	},
}

// serveStockTool serves stock_level on the NATS at url until stdin closes
// (the example closes it when it ends), after writing "ready".
func serveStockTool(url string, stdin io.Reader, stdout io.Writer) int {
	nc, err := nats.Connect(url, nats.Name("codemode-example-stock-tool"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stock tool:", err)
		return 1
	}
	defer nc.Close()
	svc, err := codemode.ServeTool(nc, stockTool)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stock tool:", err)
		return 1
	}
	defer func() { _ = svc.Stop() }()
	if err := nc.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "stock tool:", err)
		return 1
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = bufio.NewReader(stdin).ReadString('\n')
	return 0
}
