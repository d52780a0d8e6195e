package clickhouse

import "testing"

func TestDialectFor(t *testing.T) {
	tests := []struct {
		version string
		forced  Dialect
		want    Dialect
		wantErr bool
	}{
		{version: "18.16.1", want: DialectLegacy},
		{version: "19.17.9.60", want: DialectLegacy},
		{version: "20.1.2.4", want: DialectLegacy},
		{version: "20.3.1.1", want: DialectModern},
		{version: "20.3-lts", want: DialectModern},
		{version: "21.8.15.7", want: DialectModern},
		{version: "24.3.2.23", want: DialectModern},
		{version: "26.5.1.1", want: DialectModern},
		{version: " 23.8.1 \n", want: DialectModern},
		{version: "18.16.1", forced: DialectModern, want: DialectModern},
		{version: "garbage", forced: DialectLegacy, want: DialectLegacy},
		{version: "", wantErr: true},
		{version: "18", wantErr: true},
		{version: "v18.16", wantErr: true},
		{version: "18.x", wantErr: true},
	}
	for _, tt := range tests {
		got, err := dialectFor(tt.version, tt.forced)
		if (err != nil) != tt.wantErr {
			t.Errorf("dialectFor(%q, %q) error = %v, wantErr %v", tt.version, tt.forced, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("dialectFor(%q, %q) = %q, want %q", tt.version, tt.forced, got, tt.want)
		}
	}
}
