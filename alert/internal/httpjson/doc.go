// Package httpjson posts a JSON body over HTTP and classifies the outcome
// as the alert notifiers need it: success, a retryable failure, or a
// fatal one (*alert.NotifyError with Permanent set). It is shared by the
// Alertmanager and webhook notifiers.
//
// Post blocks for at most its timeout (or until ctx ends) and is safe for
// concurrent use.
package httpjson
