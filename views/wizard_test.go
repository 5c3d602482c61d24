package views

import "testing"

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
