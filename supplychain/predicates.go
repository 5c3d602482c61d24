package supplychain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	spdxjson "github.com/spdx/tools-golang/json"
)

// readSBOM describes an SBOM predicate ("CycloneDX 1.5, 12 components"), or says why it
// cannot be read. Cosign puts the document itself in the predicate.
func readSBOM(predicateType string, raw json.RawMessage) (string, error) {
	raw = unwrapString(raw)
	if strings.HasPrefix(predicateType, PredicateSPDX) {
		doc, err := spdxjson.Read(bytes.NewReader(raw))
		if err != nil {
			return "", fmt.Errorf("read the SPDX document: %w", err)
		}
		return fmt.Sprintf("%s, %d packages", doc.SPDXVersion, len(doc.Packages)), nil
	}
	var bom cdx.BOM
	if err := json.Unmarshal(raw, &bom); err != nil {
		return "", fmt.Errorf("read the CycloneDX document: %w", err)
	}
	if bom.BOMFormat != cdx.BOMFormat {
		return "", errors.New("the predicate is not a CycloneDX BOM (bomFormat is not CycloneDX)")
	}
	n := 0
	if bom.Components != nil {
		n = len(*bom.Components)
	}
	return fmt.Sprintf("CycloneDX %s, %d components", bom.SpecVersion.String(), n), nil
}

// unwrapString returns the JSON a predicate holds as a string (some tools attest the
// document as a JSON string), else the predicate itself.
func unwrapString(raw json.RawMessage) json.RawMessage {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return json.RawMessage(s)
	}
	return raw
}

// Finding is one vulnerability a scan reported, with a severity of Severities.
type Finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
}

// ScanResult is what a scan attestation says.
type ScanResult struct {
	Scanner  string    `json:"scanner"`
	Findings []Finding `json:"findings"`
}

// vulnPredicate is cosign's vuln/v1 predicate; the scanner's own report is in result.
type vulnPredicate struct {
	Scanner struct {
		URI     string          `json:"uri"`
		Version string          `json:"version"`
		Result  json.RawMessage `json:"result"`
	} `json:"scanner"`
}

// trivyReport and grypeReport are the parts of Trivy's and Grype's JSON reports the gate
// reads.
type trivyReport struct {
	Results []struct {
		Vulnerabilities []struct {
			VulnerabilityID string `json:"VulnerabilityID"`
			Severity        string `json:"Severity"`
		} `json:"Vulnerabilities"`
	} `json:"Results"`
	SchemaVersion *int `json:"SchemaVersion"`
}

type grypeReport struct {
	Matches *[]struct {
		Vulnerability struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
		} `json:"vulnerability"`
	} `json:"matches"`
}

// readScan reads a vulnerability scan: cosign's vuln/v1 predicate whose result is a
// Trivy or Grype JSON report, or the vulnerabilities of a CycloneDX document.
func readScan(predicateType string, raw json.RawMessage) (ScanResult, error) {
	if isSBOM(predicateType) {
		return cycloneDXScan(raw)
	}
	var p vulnPredicate
	if err := json.Unmarshal(raw, &p); err != nil {
		return ScanResult{}, fmt.Errorf("read the vuln predicate: %w", err)
	}
	res := ScanResult{Scanner: strings.TrimSpace(p.Scanner.URI + " " + p.Scanner.Version)}
	result := unwrapString(p.Scanner.Result)
	var tr trivyReport
	var gr grypeReport
	switch {
	case json.Unmarshal(result, &tr) == nil && (tr.SchemaVersion != nil || len(tr.Results) > 0):
		for _, r := range tr.Results {
			for _, v := range r.Vulnerabilities {
				res.Findings = append(res.Findings, Finding{ID: v.VulnerabilityID, Severity: normalSeverity(v.Severity)})
			}
		}
	case json.Unmarshal(result, &gr) == nil && gr.Matches != nil:
		for _, m := range *gr.Matches {
			res.Findings = append(res.Findings, Finding{ID: m.Vulnerability.ID, Severity: normalSeverity(m.Vulnerability.Severity)})
		}
	default:
		return res, errors.New("the scan result is neither a Trivy nor a Grype JSON report")
	}
	return res, nil
}

// cycloneDXScan reads the vulnerabilities a CycloneDX document lists (its highest rating
// each).
func cycloneDXScan(raw json.RawMessage) (ScanResult, error) {
	var bom cdx.BOM
	if err := json.Unmarshal(unwrapString(raw), &bom); err != nil || bom.Vulnerabilities == nil {
		return ScanResult{}, errors.New("the CycloneDX document has no vulnerabilities section")
	}
	res := ScanResult{Scanner: "CycloneDX vulnerabilities"}
	for _, v := range *bom.Vulnerabilities {
		sev := ""
		if v.Ratings != nil {
			for _, r := range *v.Ratings {
				if rank(string(r.Severity)) > rank(sev) {
					sev = normalSeverity(string(r.Severity))
				}
			}
		}
		res.Findings = append(res.Findings, Finding{ID: v.ID, Severity: sev})
	}
	return res, nil
}

// Counts are a scan's findings per severity (critical, high, medium, low).
func (r ScanResult) Counts() map[string]int {
	out := map[string]int{}
	for _, f := range r.Findings {
		if f.Severity != "" {
			out[f.Severity]++
		}
	}
	return out
}

// Blocking lists the findings at or above a severity, highest first, then by id.
func (r ScanResult) Blocking(threshold string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if AtOrAbove(f.Severity, threshold) {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if rank(out[i].Severity) != rank(out[j].Severity) {
			return rank(out[i].Severity) > rank(out[j].Severity)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
