package llm

import "encoding/json"

// The reply schemas of Contract 3 (docs/contracts.md). Field names are the JSON tags of the
// matching structs in pkg/messages. Every schema is compatible with OpenAI's
// strict mode: each object lists all its properties as required and sets
// additionalProperties to false, and optional values are nullable instead
// (type ["string","null"]).
//
// These are package-level values because the brief names them
// (llm.PlanSchema, ...); treat them as constants and do not modify them.
var (
	PlanSchema = Schema{Name: "plan", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "description": {"type": "string", "description": "What the script does, in a few sentences."},
    "approach": {"type": "string", "description": "How: steps, libraries, edge cases."}
  },
  "required": ["description", "approach"],
  "additionalProperties": false
}`)}

	SolutionSchema = Schema{Name: "solution", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "language": {"type": "string", "enum": ["python"]},
    "code": {"type": "string", "description": "The complete solution.py."},
    "packages": {"type": "array", "items": {"type": "string"}, "description": "PyPI packages the code imports."},
    "system_packages": {"type": "array", "items": {"type": "string"}, "description": "Debian packages the code needs."}
  },
  "required": ["language", "code", "packages", "system_packages"],
  "additionalProperties": false
}`)}

	// PlannedSolutionSchema is the solution reply of the one-round first
	// pass (messages.CodeInput.PlanInline): the solution's fields and the
	// plan beside them. It keeps the name solution (a server scripted or
	// tuned for it answers as before); the plan may be null, or missing
	// altogether (Optional), as models outside strict mode leave it out.
	PlannedSolutionSchema = Schema{Name: "solution", Optional: []string{"plan"}, Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "plan": {
      "type": ["object", "null"],
      "description": "The plan, written before the code: what the script does and how.",
      "properties": {
        "description": {"type": "string", "description": "What the script does, in a few sentences."},
        "approach": {"type": "string", "description": "How: steps, the functions with their signatures, libraries, edge cases."}
      },
      "required": ["description", "approach"],
      "additionalProperties": false
    },
    "language": {"type": "string", "enum": ["python"]},
    "code": {"type": "string", "description": "The complete solution.py."},
    "packages": {"type": "array", "items": {"type": "string"}, "description": "PyPI packages the code imports."},
    "system_packages": {"type": "array", "items": {"type": "string"}, "description": "Debian packages the code needs."}
  },
  "required": ["plan", "language", "code", "packages", "system_packages"],
  "additionalProperties": false
}`)}

	TestsSchema = Schema{Name: "tests", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "code": {"type": "string", "description": "The complete test_solution.py (pytest)."}
  },
  "required": ["code"],
  "additionalProperties": false
}`)}

	PackagesSchema = Schema{Name: "packages", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "packages": {"type": "array", "items": {"type": "string"}, "description": "PyPI package names."}
  },
  "required": ["packages"],
  "additionalProperties": false
}`)}

	DiagnosisSchema = Schema{Name: "diagnosis", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "failures": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "test_name": {"type": "string"},
          "error_message": {"type": "string"},
          "expected_behavior": {"type": "string"},
          "actual_behavior": {"type": "string"},
          "root_cause": {"type": "string"},
          "suggested_fix": {"type": "string"},
          "error_type": {"type": "string", "enum": ["logic", "environment", "test_error"]}
        },
        "required": ["test_name", "error_message", "expected_behavior", "actual_behavior", "root_cause", "suggested_fix", "error_type"],
        "additionalProperties": false
      }
    },
    "needs_packages": {"type": "array", "items": {"type": "string"}},
    "needs_system_packages": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["failures", "needs_packages", "needs_system_packages"],
  "additionalProperties": false
}`)}

	TestPatchesSchema = Schema{Name: "test_patches", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "patches": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "test_name": {"type": "string"},
          "fixed_code": {"type": "string", "description": "The whole corrected test function."}
        },
        "required": ["test_name", "fixed_code"],
        "additionalProperties": false
      }
    }
  },
  "required": ["patches"],
  "additionalProperties": false
}`)}

	FixVerificationSchema = Schema{Name: "fix_verification", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "all_fixes_applied": {"type": "boolean"},
    "missing_fixes": {"type": "array", "items": {"type": "string"}},
    "explanation": {"type": "string"}
  },
  "required": ["all_fixes_applied", "missing_fixes", "explanation"],
  "additionalProperties": false
}`)}

	ConstraintSchema = Schema{Name: "constraint", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "column_name": {"type": ["string", "null"]},
    "check_type": {"type": "string", "enum": ["greater_than", "less_than", "between", "regex", "isin", "not_null", "none"]},
    "parameters": {
      "type": "object",
      "properties": {
        "value": {"type": ["number", "null"], "description": "greater_than, less_than"},
        "min": {"type": ["number", "null"], "description": "between"},
        "max": {"type": ["number", "null"], "description": "between"},
        "pattern": {"type": ["string", "null"], "description": "regex"},
        "values": {"type": ["array", "null"], "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}, "description": "isin"}
      },
      "required": ["value", "min", "max", "pattern", "values"],
      "additionalProperties": false
    },
    "explanation": {"type": "string"}
  },
  "required": ["column_name", "check_type", "parameters", "explanation"],
  "additionalProperties": false
}`)}

	PackageReplacementSchema = Schema{Name: "package_replacement", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "replacement": {"type": ["string", "null"], "description": "The PyPI package to use instead, or null if there is none."}
  },
  "required": ["replacement"],
  "additionalProperties": false
}`)}
)

// SchemaByName returns the Contract 3 (docs/contracts.md) schema with that name.
func SchemaByName(name string) (Schema, bool) {
	switch name {
	case PlanSchema.Name:
		return PlanSchema, true
	case SolutionSchema.Name:
		return SolutionSchema, true
	case TestsSchema.Name:
		return TestsSchema, true
	case PackagesSchema.Name:
		return PackagesSchema, true
	case DiagnosisSchema.Name:
		return DiagnosisSchema, true
	case TestPatchesSchema.Name:
		return TestPatchesSchema, true
	case FixVerificationSchema.Name:
		return FixVerificationSchema, true
	case ConstraintSchema.Name:
		return ConstraintSchema, true
	case PackageReplacementSchema.Name:
		return PackageReplacementSchema, true
	}
	return Schema{}, false
}
