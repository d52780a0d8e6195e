"""crdvalidate validates custom resources against a CustomResourceDefinition
offline, as a Kubernetes API server with strict field validation (kubectl
apply --validate=strict) would: the CRD version's openAPIV3Schema, unknown
fields refused where the schema does not preserve them.

kubernetes-validate (PyPI) ships schemas for Kubernetes' own kinds only and
takes no CRD; this script runs in its virtual environment
(deploy/kubernetes/install.sh) and validates with the library it validates
with, jsonschema. deploy/kubernetes's TestFlinkDeploymentPatches runs it.

Usage: python crdvalidate.py [--flat-flink-configuration] CRD FILE...

Each FILE is one resource (YAML or JSON). One line per file on stdout:
"FILE: ok" or "FILE: invalid: <reason>"; the exit status is 1 when any
file is invalid, 2 on a usage or CRD error.

--flat-flink-configuration declares spec.flinkConfiguration as the Flink
Kubernetes Operator's CRDs up to release 1.12 did (a map of strings;
release 1.13 made it any YAML, x-kubernetes-preserve-unknown-fields), so
one vendored CRD checks what both accept.
"""

import copy
import sys

import jsonschema
import yaml

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def strict(schema):
    """Returns schema as a JSON schema (draft 4, which OpenAPI 3.0's schema
    object extends) with unknown fields refused: OpenAPI's nullable becomes
    a null type, an object with properties that does not preserve unknown
    fields gets additionalProperties false (the API server prunes or, with
    strict field validation, refuses them)."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in ("properties", "patternProperties", "definitions"):
            out[k] = {name: strict(s) for name, s in v.items()}
        elif k.startswith("x-kubernetes-") or k == "nullable":
            continue
        else:
            out[k] = strict(v)
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
    if "properties" in schema and "additionalProperties" not in schema and not preserve:
        out["additionalProperties"] = False
    return out


def main(argv):
    flat = "--flat-flink-configuration" in argv
    args = [a for a in argv if a != "--flat-flink-configuration"]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0]) as f:
        crd = yaml.load(f, Loader=Loader)
    if crd.get("kind") != "CustomResourceDefinition":
        print(args[0] + ": not a CustomResourceDefinition", file=sys.stderr)
        return 2
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    schemas = {}
    for v in crd["spec"]["versions"]:
        s = copy.deepcopy(v["schema"]["openAPIV3Schema"])
        if flat:
            s["properties"]["spec"]["properties"]["flinkConfiguration"] = {
                "type": "object", "additionalProperties": {"type": "string"}}
        s = strict(s)
        # The API server checks these itself; the CRD's schema leaves
        # metadata open.
        s.setdefault("required", [])
        s["required"] = sorted(set(s["required"]) | {"apiVersion", "kind", "metadata"})
        s["properties"]["apiVersion"] = {"enum": [group + "/" + v["name"]]}
        s["properties"]["kind"] = {"enum": [kind]}
        s["properties"]["metadata"] = {"type": "object", "required": ["name"],
                                       "properties": {"name": {"type": "string", "minLength": 1}}}
        jsonschema.Draft4Validator.check_schema(s)
        schemas[group + "/" + v["name"]] = jsonschema.Draft4Validator(s)
    bad = 0
    for path in args[1:]:
        try:
            with open(path) as f:
                doc = yaml.load(f, Loader=Loader)
            if not isinstance(doc, dict):
                raise ValueError("not one resource")
            validator = schemas.get(doc.get("apiVersion"))
            if validator is None:
                raise ValueError("apiVersion %r is not served by the CRD (%s)" % (doc.get("apiVersion"), ", ".join(sorted(schemas))))
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            if errors:
                e = errors[0]
                raise ValueError("%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message))
            print(path + ": ok")
        except Exception as e:  # noqa: BLE001 - every failure is the file's verdict
            bad += 1
            print(path + ": invalid: " + " ".join(str(e).split()))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
