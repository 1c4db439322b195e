package stats

import "math"

// normalSF returns the upper tail 1 − Φ(z) of the standard normal
// distribution, computed as erfc(z/√2)/2 so it keeps its relative precision
// far into the tail.
func normalSF(z float64) float64 {
	return 0.5 * math.Erfc(z/math.Sqrt2)
}

// normalQuantile returns Φ⁻¹(p), the standard normal quantile, as
// −√2·erfcinv(2p).
func normalQuantile(p float64) float64 {
	return -math.Sqrt2 * math.Erfcinv(2*p)
}

// tTwoSided returns the two-sided p-value P(|T| ≥ |t|) of Student's t
// distribution with df degrees of freedom given x = df/(df+t²): it equals
// the regularized incomplete beta function I_x(df/2, 1/2).
func tTwoSided(x, df float64) float64 {
	return regIncBeta(df/2, 0.5, x)
}

// regIncBeta returns the regularized incomplete beta function
//
//	I_x(a, b) = B(x; a, b) / B(a, b),  B(x; a, b) = ∫₀ˣ t^(a−1) (1−t)^(b−1) dt,
//
// for a, b > 0 and x in [0, 1]. It evaluates the continued fraction of
// DLMF 8.17.22,
//
//	I_x(a, b) = x^a (1−x)^b / (a B(a, b)) · 1/(1+ d₁/(1+ d₂/(1+ …)))
//	d₂ₘ   =  m (b−m) x / ((a+2m−1)(a+2m))
//	d₂ₘ₊₁ = −(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),
//
// which converges quickly for x < (a+1)/(a+b+2); above that it uses the
// symmetry I_x(a, b) = 1 − I_{1−x}(b, a). The fraction is evaluated forward
// with the modified Lentz method.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(a) || math.IsNaN(b) || a <= 0 || b <= 0:
		return math.NaN()
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	if x > (a+1)/(a+b+2) {
		return 1 - regIncBeta(b, a, 1-x)
	}
	lga, _ := math.Lgamma(a)
	lgb, _ := math.Lgamma(b)
	lgab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x) + b*math.Log1p(-x) - math.Log(a) - (lga + lgb - lgab))
	return front / betaCF(a, b, x)
}

// betaCF evaluates 1 + d₁/(1 + d₂/(1 + …)) for regIncBeta.
func betaCF(a, b, x float64) float64 {
	const (
		tiny = 1e-300
		eps  = 1e-16
	)
	f, c, d := 1.0, 1.0, 0.0
	for j := 1; j <= 1000; j++ {
		m := float64(j / 2)
		var dj float64
		if j%2 == 0 {
			dj = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		} else {
			dj = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		}
		d = 1 + dj*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + dj/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := c * d
		f *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return f
}
