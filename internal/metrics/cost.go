package metrics

import (
	"fmt"
	"strconv"
	"strings"
)

// Price is what a model's tokens cost, per million, in the operator's
// currency (AUTOCODER_MODEL_PRICES).
type Price struct {
	Input, Output float64
}

// Cost is what inputTokens and outputTokens cost at p.
func (p Price) Cost(inputTokens, outputTokens int) float64 {
	return (float64(inputTokens)*p.Input + float64(outputTokens)*p.Output) / 1e6
}

// Prices are the prices of the models, by the name a job gives
// (options.model).
type Prices map[string]Price

// maxPrices bounds the models AUTOCODER_MODEL_PRICES may list.
const maxPrices = 200

// ParsePrices reads AUTOCODER_MODEL_PRICES: "model=input/output" entries,
// comma separated, the prices per million input and output tokens, as
// "gpt-4.1=2.00/8.00,gpt-4.1-mini=0.40/1.60". Empty: no prices. The error
// names the entry at fault.
func ParsePrices(s string) (Prices, error) {
	out := Prices{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		model, prices, ok := strings.Cut(entry, "=")
		in, outp, ok2 := strings.Cut(prices, "/")
		model = strings.TrimSpace(model)
		if !ok || !ok2 || model == "" {
			return nil, fmt.Errorf("AUTOCODER_MODEL_PRICES: %q is not model=input/output (prices per million tokens)", entry)
		}
		var p Price
		var err error
		for _, f := range []struct {
			text string
			dst  *float64
		}{{in, &p.Input}, {outp, &p.Output}} {
			*f.dst, err = strconv.ParseFloat(strings.TrimSpace(f.text), 64)
			if err != nil || *f.dst < 0 || *f.dst > 1e6 {
				return nil, fmt.Errorf("AUTOCODER_MODEL_PRICES: %q: a price must be a number from 0 to 1000000", entry)
			}
		}
		if _, dup := out[model]; dup {
			return nil, fmt.Errorf("AUTOCODER_MODEL_PRICES: model %s is priced twice", model)
		}
		out[model] = p
	}
	if len(out) > maxPrices {
		return nil, fmt.Errorf("AUTOCODER_MODEL_PRICES: %d models, more than %d", len(out), maxPrices)
	}
	return out, nil
}
