package views

import (
	"context"
	"strings"
	"testing"
)

// TestWizardStepsSkipped: a step before the open one that was not done reads "skipped",
// not "not started"; the steps are named as the tabs (Isolation, not Sandbox).
func TestWizardStepsSkipped(t *testing.T) {
	steps := WizardSteps([]bool{true, true, true, false, true}, 5)
	want := []WizardState{WizardDone, WizardDone, WizardDone, WizardSkipped, WizardDone, WizardCurrent, WizardPending}
	for i, s := range steps {
		if s.State != want[i] {
			t.Errorf("step %d (%s): %s, want %s", s.Num, s.Title, s.State, want[i])
		}
	}
	if steps[5].Title != "Isolation" {
		t.Errorf("step 6 is named %q, want the tab's name Isolation", steps[5].Title)
	}
}

// TestRedisDoneAheadIsExplained: the Redis step, set up with step 2, is done before steps
// 3 and 4; the header says why, and its section does not come before the open step.
func TestRedisDoneAheadIsExplained(t *testing.T) {
	steps := WizardSteps([]bool{true, true, false, false, true}, 2)
	if steps[4].State != WizardDone || steps[4].Note != "set up with step 2" {
		t.Fatalf("step 5: %+v", steps[4])
	}
	if steps := WizardSteps([]bool{true, true, true, true, true}, 5); steps[4].Note != "" {
		t.Fatalf("step 5 reached in order still has a note: %+v", steps[4])
	}
	var b strings.Builder
	w := RegionWizard{Region: RegionView{ID: "r1", Name: "eu-2", HasRedis: true}, Current: 2, Done: []bool{true, true, false, false, true}}
	if err := RegionWizardPage(Page{}, w).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `data-testid="step5-done"`) || !strings.Contains(b.String(), "set up with step 2") {
		t.Fatal("on step 3 the Redis step shows as a done section, or its header note is missing")
	}
}
