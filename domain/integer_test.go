package domain

import "testing"

// TestIntegerText: a JSON number is an integer when its value is a whole
// number (JSON Schema 2020-12 §6.1.1), whatever its literal's form.
func TestIntegerText(t *testing.T) {
	whole := map[string]string{
		"10": "10", "10.0": "10", "1e1": "10", "1E+1": "10", "1.0e1": "10", "100e-1": "10", "1.5e1": "15",
		"0": "0", "-0": "0", "0.000": "0", "0e-99999999999": "0", "-7": "-7", "-7.000": "-7", "-70e-1": "-7",
		"9223372036854775807": "9223372036854775807", "9.223372036854775807e18": "9223372036854775807",
		"12345678901234567890": "99999999999999999999", "1e19": "99999999999999999999", "-1e400": "-99999999999999999999",
		"1e99999999999999999999": "99999999999999999999", "0.00100e3": "1",
	}
	for lit, want := range whole {
		if got, ok := integerText(lit); !ok || got != want {
			t.Errorf("integerText(%s) = %q, %v; want %q", lit, got, ok, want)
		}
	}
	for _, lit := range []string{"1.5", "0.1", "1e-1", "15e-1", "-0.5", "1.05e1", "1e-99999999999999999999", "123456789.0000000001"} {
		if got, ok := integerText(lit); ok {
			t.Errorf("integerText(%s) = %q, want no integer", lit, got)
		}
	}
}
