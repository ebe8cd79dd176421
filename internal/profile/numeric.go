package profile

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// numAcc accumulates numeric statistics over int and float values.
type numAcc struct {
	n              int
	allInt         bool
	imin, imax     int64
	fmin, fmax     float64
	sumHi, sumLo   uint64  // exact int128 sum while allInt
	fsum, fcomp    float64 // Neumaier-compensated sum of all values
	mean, m2       float64 // Welford, for the standard deviation
	ints           []int64 // stored values while allInt
	flts           []float64
	limit          int
	sampled        bool
	rng            *rand.Rand
	seed           uint64
	idx            int
	strictlyIncr   bool // ints so far strictly increase: unique without a hash set
	last           int64
	haveLast       bool
	hasNaN, hasInf bool
}

func (a *numAcc) init(limit int, seed uint64, idx int) {
	a.allInt, a.limit, a.seed, a.idx, a.strictlyIncr = true, limit, seed, idx, true
}

func (a *numAcc) addInt(v int64) {
	a.n++
	if a.n == 1 {
		a.imin, a.imax, a.fmin, a.fmax = v, v, float64(v), float64(v)
	} else {
		a.imin, a.imax = min(a.imin, v), max(a.imax, v)
		a.fmin, a.fmax = min(a.fmin, float64(v)), max(a.fmax, float64(v))
	}
	if a.haveLast && v <= a.last {
		a.strictlyIncr = false
	}
	a.last, a.haveLast = v, true
	if a.allInt {
		var carry uint64
		a.sumLo, carry = bits.Add64(a.sumLo, uint64(v), 0)
		ext := uint64(0)
		if v < 0 {
			ext = math.MaxUint64
		}
		a.sumHi, _ = bits.Add64(a.sumHi, ext, carry)
		a.store(v, 0)
	} else {
		a.store(0, float64(v))
	}
	a.moments(float64(v))
}

func (a *numAcc) addFloat(f float64) {
	a.n++
	a.strictlyIncr = false
	if math.IsNaN(f) {
		a.hasNaN = true
	}
	if math.IsInf(f, 0) {
		a.hasInf = true
	}
	if a.n == 1 {
		a.fmin, a.fmax = f, f
	} else {
		a.fmin, a.fmax = min(a.fmin, f), max(a.fmax, f)
	}
	if a.allInt {
		a.allInt = false
		a.flts = make([]float64, len(a.ints), max(cap(a.ints), 16))
		for i, v := range a.ints {
			a.flts[i] = float64(v)
		}
		a.ints = nil
	}
	a.store(0, f)
	a.moments(f)
}

func (a *numAcc) moments(x float64) {
	t := a.fsum + x
	if math.Abs(a.fsum) >= math.Abs(x) {
		a.fcomp += (a.fsum - t) + x
	} else {
		a.fcomp += (x - t) + a.fsum
	}
	a.fsum = t
	d := x - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (x - a.mean)
}

// store keeps every value up to the limit, then a uniform reservoir sample
// (algorithm R) of limit values.
func (a *numAcc) store(iv int64, fv float64) {
	held := len(a.ints) + len(a.flts)
	if held < a.limit {
		if a.allInt {
			a.ints = append(a.ints, iv)
		} else {
			a.flts = append(a.flts, fv)
		}
		return
	}
	if !a.sampled {
		a.sampled = true
		a.rng = rand.New(rand.NewPCG(a.seed, uint64(a.idx)+0x9e3779b97f4a7c15))
	}
	j := a.rng.IntN(a.n)
	if j < a.limit {
		if a.allInt {
			a.ints[j] = iv
		} else {
			a.flts[j] = fv
		}
	}
}

func (a *numAcc) stats() *NumericStats {
	if a.n == 0 {
		return nil
	}
	st := &NumericStats{Min: a.fmin, Max: a.fmax, MedianExact: !a.sampled}
	if a.allInt {
		st.IntMin, st.IntMax = a.imin, a.imax
		// int128 to float64: exact to float64's precision.
		hi := int64(a.sumHi)
		st.Mean = (float64(hi)*0x1p64 + float64(a.sumLo)) / float64(a.n)
	} else {
		st.Mean = (a.fsum + a.fcomp) / float64(a.n)
	}
	if a.n > 1 {
		st.Std = math.Sqrt(a.m2 / float64(a.n-1))
	}
	if a.hasInf {
		// Infinite values: the mean is ±Inf (NaN when both signs occur) and
		// the spread is undefined, as in pandas.
		st.Mean, st.Std = a.fsum, math.NaN()
	}
	if a.sampled {
		st.MedianSample = a.limit
	}
	// Sorting the kept values gives the median and, when every value was
	// kept, the exact distinct count and a two-pass standard deviation
	// (which is also how pandas computes it).
	var exactStd float64
	if a.allInt {
		slices.Sort(a.ints)
		st.Median = medianSorted(a.ints)
		if !a.sampled {
			st.distinct = countRuns(a.ints)
			exactStd = twoPassStd(a.ints, st.Mean)
		}
	} else {
		a.flts = slices.DeleteFunc(a.flts, math.IsNaN) // NaN has no rank
		slices.Sort(a.flts)
		st.Median = medianSorted(a.flts)
		if !a.sampled {
			st.distinct = countRuns(a.flts)
			exactStd = twoPassStd(a.flts, st.Mean)
		}
	}
	if !a.sampled && a.n > 1 && !a.hasInf {
		st.Std = exactStd
	}
	a.ints, a.flts = nil, nil
	return st
}

func medianSorted[T int64 | float64](v []T) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return float64(v[n/2])
	}
	lo, hi := float64(v[n/2-1]), float64(v[n/2])
	return lo + (hi-lo)/2
}

func countRuns[T int64 | float64](v []T) int {
	if len(v) == 0 {
		return 0
	}
	n := 1
	for i := 1; i < len(v); i++ {
		if v[i] != v[i-1] {
			n++
		}
	}
	return n
}

// twoPassStd is the sample standard deviation around mean, with a
// compensated sum of squares.
func twoPassStd[T int64 | float64](v []T, mean float64) float64 {
	if len(v) < 2 {
		return 0
	}
	var sum, comp float64
	for _, x := range v {
		d := float64(x) - mean
		y := d * d
		t := sum + y
		if sum >= y {
			comp += (sum - t) + y
		} else {
			comp += (y - t) + sum
		}
		sum = t
	}
	return math.Sqrt((sum + comp) / float64(len(v)-1))
}
