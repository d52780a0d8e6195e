package httpjson

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
)

func TestPost(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		delay         time.Duration
		wantErr       bool
		wantPermanent bool
		wantCode      int
	}{
		{name: "200 ok", status: 200},
		{name: "204 ok", status: 204},
		{name: "400 permanent", status: 400, wantErr: true, wantPermanent: true, wantCode: 400},
		{name: "404 permanent", status: 404, wantErr: true, wantPermanent: true, wantCode: 404},
		{name: "408 retryable", status: 408, wantErr: true, wantCode: 408},
		{name: "429 retryable", status: 429, wantErr: true, wantCode: 429},
		{name: "500 retryable", status: 500, wantErr: true, wantCode: 500},
		{name: "503 retryable", status: 503, wantErr: true, wantCode: 503},
		{name: "timeout retryable", status: 200, delay: 300 * time.Millisecond, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotBody, gotCT, gotAuth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotBody, gotCT, gotAuth = string(b), r.Header.Get("Content-Type"), r.Header.Get("Authorization")
				if tt.delay > 0 {
					select {
					case <-time.After(tt.delay):
					case <-r.Context().Done():
					}
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte("details of " + tt.name))
			}))
			defer srv.Close()
			h := http.Header{"Authorization": {"Bearer x"}}
			err := Post(context.Background(), srv.Client(), "test", srv.URL+"/hook?token=secret", []byte(`{"a":1}`), h, 100*time.Millisecond)
			if (err != nil) != tt.wantErr || retry.IsPermanent(err) != tt.wantPermanent {
				t.Fatalf("err = %v (permanent %v), want error %v permanent %v", err, retry.IsPermanent(err), tt.wantErr, tt.wantPermanent)
			}
			if tt.delay == 0 && (gotBody != `{"a":1}` || gotCT != "application/json" || gotAuth != "Bearer x") {
				t.Errorf("server got body %q content-type %q auth %q", gotBody, gotCT, gotAuth)
			}
			if err == nil {
				return
			}
			var ne *alertdeliver.NotifyError
			if !errors.As(err, &ne) || ne.StatusCode != tt.wantCode {
				t.Errorf("err %#v: want a NotifyError with status %d", err, tt.wantCode)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the query: %v", err)
			}
			if tt.wantCode != 0 && !strings.Contains(err.Error(), "details of") {
				t.Errorf("error lacks the response body: %v", err)
			}
		})
	}
}

func TestPostConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := Post(context.Background(), http.DefaultClient, "test", url, nil, nil, time.Second)
	if err == nil || retry.IsPermanent(err) {
		t.Errorf("err = %v, want a retryable error", err)
	}
}

func TestCheckURL(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:9093", true},
		{"https://am.example/api", true},
		{"ftp://x", false},
		{"127.0.0.1:9093", false},
		{"http://", false},
		{"://", false},
	} {
		if err := CheckURL(tt.url); (err == nil) != tt.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
	}
}
