// Package httpjson posts a JSON body over HTTP and classifies the outcome
// as the alert notifiers need it: success, a retryable failure
// (*alertdeliver.NotifyError), or a permanent one (the same, marked with
// retry.Permanent). It makes one attempt. It is shared by the
// Alertmanager and webhook notifiers.
//
// Post blocks for at most its timeout (or until ctx ends) and is safe for
// concurrent use.
package httpjson
