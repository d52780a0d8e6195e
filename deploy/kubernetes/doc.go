// Package kubernetes holds Kubernetes manifests for skewlens: run as a
// Deployment whose replicas share one Kafka consumer group (run.yaml),
// serve as a Deployment behind a Service (serve.yaml), and the
// configuration and API tokens as Secrets (secrets.yaml), a Flink job
// with skewlens' reporter for the Flink Kubernetes Operator
// (flink-deployment.yaml); and install.sh,
// which installs kubernetes-validate from PyPI into a virtual environment
// of its own (make deps runs it).
//
// The package has no Go code of its own. Its tests validate every
// manifest with kubernetes-validate in strict mode (unknown fields are
// errors) against the schemas of one Kubernetes version, which the tool
// ships in its package, so the check works offline. It has no schema for
// the operator's FlinkDeployment: that manifest is decoded strictly into
// the spec fields it uses, its reporter keys are checked against
// docs/flink.md, and its podTemplate is validated as a core/v1 Pod; and it
// is validated, as shipped and with the FlinkDeployment patches skewlens
// emits (skew/rescale) merged in, against the operator's own CRD
// (testdata/, vendored from the operator's release 1.15.0) by
// crdvalidate.py, on the jsonschema library of kubernetes-validate's
// virtual environment. They skip under go test -short, and fail, never
// skip, in the full run when the tool cannot be installed.
package kubernetes
