package app

import "testing"

func TestTextWidthFlag(t *testing.T) {
	terminal := func() int { return 93 }
	tests := []struct {
		name    string
		flag    int
		columns func() int
		want    int
		wantErr bool
	}{
		{"terminal", 0, terminal, 93, false},
		{"flag wins", 120, terminal, 120, false},
		{"no terminal: no limit", 0, nil, 0, false},
		{"negative", -1, terminal, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := Text{Width: tc.flag}
			got, err := f.LineWidth(tc.columns)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("lineWidth = %d, %v; want %d (error %t)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
