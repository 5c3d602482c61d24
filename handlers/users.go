package handlers

import (
	"net/mail"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// UserInput is the body of POST /api/users.
type UserInput struct {
	Email    string `json:"email" form:"email"`
	Role     string `json:"role" form:"role"`
	Password string `json:"password" form:"password"`
	Name     string `json:"name" form:"name"`
}

// ValidateUser checks a new user's fields.
func ValidateUser(in UserInput) FieldErrors {
	errs := FieldErrors{}
	if a, err := mail.ParseAddress(in.Email); err != nil || a.Address != strings.TrimSpace(in.Email) {
		errs["email"] = "Enter an e-mail address such as ada@example.com."
	}
	if !store.ValidRole(in.Role) {
		errs["role"] = "Choose owner, admin, member or viewer."
	}
	if m := ValidatePassword(in.Password); m != "" {
		errs["password"] = m
	}
	return errs
}

// ValidatePassword checks a new password ("" asks for a generated one): at least 10
// characters, and at most 72 bytes, the most bcrypt reads.
func ValidatePassword(p string) string {
	switch {
	case p == "":
		return ""
	case len(p) < 10:
		return "Use at least 10 characters, or leave it empty to generate one."
	case len(p) > 72:
		return "Use at most 72 bytes (bcrypt ignores what follows)."
	}
	return ""
}

// GeneratePassword returns a random password for a new user.
func GeneratePassword() string { return store.RandomToken("")[:20] }

func (h *Handlers) createUser(c *fiber.Ctx, in UserInput) (*store.User, string, FieldErrors, error) {
	in.Email = strings.TrimSpace(in.Email)
	if errs := ValidateUser(in); len(errs) > 0 {
		return nil, "", errs, nil
	}
	if err := store.CheckGrant(Who(c).User, in.Role); err != nil {
		return nil, "", nil, err
	}
	generated := ""
	if in.Password == "" {
		in.Password = GeneratePassword()
		generated = in.Password
	}
	u, err := h.Store.CreateUser(ctx(c), in.Email, in.Name, in.Role, in.Password)
	if errorsIsConflict(err) {
		return nil, "", FieldErrors{"email": "A user with this e-mail exists already."}, nil
	}
	return u, generated, nil, err
}

// UsersPage lists users and offers to add one.
func (h *Handlers) UsersPage(c *fiber.Ctx) error {
	us, err := h.Store.ListUsers(ctx(c))
	if err != nil {
		return h.Fail(c, err)
	}
	return Render(c, fiber.StatusOK, usersPage(Who(c), h.page(c, "Users", "users"), us, views.Form{}, ""))
}

// CreateUserForm adds a user from the console.
func (h *Handlers) CreateUserForm(c *fiber.Ctx) error {
	in := UserInput{Email: c.FormValue("email"), Role: c.FormValue("role"), Password: c.FormValue("password")}
	var u *store.User
	var generated string
	var err error
	errs := inputErrors(c, "email", "role", "password")
	if errs != nil {
		in = UserInput{}
	} else {
		u, generated, errs, err = h.createUser(c, in)
	}
	if err != nil {
		return h.Fail(c, err)
	}
	if errs != nil {
		us, err := h.Store.ListUsers(ctx(c))
		if err != nil {
			return h.Fail(c, err)
		}
		f := views.Form{Values: map[string]string{"email": in.Email, "role": in.Role}, Errors: errs}
		return Render(c, fiber.StatusUnprocessableEntity, usersPage(Who(c), h.page(c, "Users", "users"), us, f, ""))
	}
	if generated == "" {
		h.flash(c, "Added "+u.Email+" as "+u.Role+".")
		return redirect(c, "/users")
	}
	// A generated password is shown in this answer only: it is never parked in the
	// session (whose table would then hold it in plain text).
	us, err := h.Store.ListUsers(ctx(c))
	if err != nil {
		return h.Fail(c, err)
	}
	page := h.page(c, "Users", "users")
	page.Flash = "Added " + u.Email + " as " + u.Role + "."
	return Render(c, fiber.StatusCreated, usersPage(Who(c), page, us, views.Form{}, generated))
}

// SetUserRoleForm changes a user's role; the last owner keeps theirs.
func (h *Handlers) SetUserRoleForm(c *fiber.Ctx) error {
	if err := h.setRole(c, c.Params("id"), c.FormValue("role")); err != nil {
		return h.Fail(c, err)
	}
	h.flash(c, "Role changed.")
	return redirect(c, "/users")
}

func (h *Handlers) setRole(c *fiber.Ctx, id, role string) error {
	return h.Store.ChangeUserRole(ctx(c), Who(c).User, id, role)
}

// DeleteUserForm removes a user (never oneself, never the last owner).
func (h *Handlers) DeleteUserForm(c *fiber.Ctx) error {
	if err := h.deleteUser(c, c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	h.flash(c, "User deleted.")
	return redirect(c, "/users")
}

func (h *Handlers) deleteUser(c *fiber.Ctx, id string) error {
	return h.Store.RemoveUser(ctx(c), Who(c).User, id)
}

// APIListUsers is GET /api/users.
func (h *Handlers) APIListUsers(c *fiber.Ctx) error {
	us, err := h.Store.ListUsers(ctx(c))
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": us})
}

// APICreateUser is POST /api/users; a generated password is returned once.
func (h *Handlers) APICreateUser(c *fiber.Ctx) error {
	var in UserInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	u, generated, errs, err := h.createUser(c, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if errs != nil {
		return Invalid(c, errs)
	}
	out := fiber.Map{"data": u}
	if generated != "" {
		out["password"] = generated
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}

// APIUpdateUser is PUT /api/users/{id} with {role}.
func (h *Handlers) APIUpdateUser(c *fiber.Ctx) error {
	var in UserInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if err := h.setRole(c, c.Params("id"), in.Role); err != nil {
		return h.Fail(c, err)
	}
	u, err := h.Store.UserByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": u})
}

// APIDeleteUser is DELETE /api/users/{id}.
func (h *Handlers) APIDeleteUser(c *fiber.Ctx) error {
	if err := h.deleteUser(c, c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}
