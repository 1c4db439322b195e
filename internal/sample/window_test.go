package sample

import (
	"reflect"
	"testing"
)

func TestRates(t *testing.T) {
	ps := []Point{{T: 0, V: 10}, {T: 2000, V: 30}, {T: 2000, V: 31}, {T: 4000, V: 4}, {T: 5000, V: 6}}
	want := []Point{{T: 2000, V: 10}, {T: 4000, V: 2}, {T: 5000, V: 2}} // same-time point skipped; the reset counts from 0
	if got := Rates(ps); !reflect.DeepEqual(got, want) {
		t.Errorf("Rates = %v, want %v", got, want)
	}
	if got := Rates(ps[:1]); len(got) != 0 {
		t.Errorf("one point: %v", got)
	}
}
