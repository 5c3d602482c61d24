package people

import (
	"sort"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/accounts"
	"runr.dev/console/handlers"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// UsersPage lists users and offers to add one.
func (h *Handlers) UsersPage(c *fiber.Ctx) error {
	us, err := h.Store.ListUsers(c.UserContext())
	if err != nil {
		return h.Fail(c, err)
	}
	return handlers.Render(c, fiber.StatusOK, usersPage(handlers.Who(c), h.Page(c, "Users", "users"), us, views.Form{}, ""))
}

// CreateUserForm adds a user from the console.
func (h *Handlers) CreateUserForm(c *fiber.Ctx) error {
	in := accounts.UserInput{Email: c.FormValue("email"), Role: c.FormValue("role"), Password: c.FormValue("password")}
	var u *store.User
	var generated string
	errs := handlers.InputErrors(c, "email", "role", "password")
	if errs != nil {
		in = accounts.UserInput{}
	} else {
		var err error
		u, generated, err = accounts.CreateUser(c.UserContext(), h.Store, handlers.Who(c).User, in)
		if fe, _, ok := h.Refusal(c, err); ok {
			errs = fe
		} else if err != nil {
			return h.Fail(c, err)
		}
	}
	if errs != nil {
		us, err := h.Store.ListUsers(c.UserContext())
		if err != nil {
			return h.Fail(c, err)
		}
		f := views.Form{Values: map[string]string{"email": in.Email, "role": in.Role}, Errors: errs}
		return handlers.Render(c, fiber.StatusUnprocessableEntity, usersPage(handlers.Who(c), h.Page(c, "Users", "users"), us, f, ""))
	}
	if generated == "" {
		h.Flash(c, "Added "+u.Email+" as "+u.Role+".")
		return handlers.Redirect(c, "/users")
	}
	// A generated password is shown in this answer only: it is never parked in the
	// session (whose table would then hold it in plain text).
	us, err := h.Store.ListUsers(c.UserContext())
	if err != nil {
		return h.Fail(c, err)
	}
	page := h.Page(c, "Users", "users")
	page.Flash = "Added " + u.Email + " as " + u.Role + "."
	return handlers.Render(c, fiber.StatusCreated, usersPage(handlers.Who(c), page, us, views.Form{}, generated))
}

// SetUserRoleForm changes a user's role; the last owner keeps theirs.
func (h *Handlers) SetUserRoleForm(c *fiber.Ctx) error {
	if err := accounts.SetRole(c.UserContext(), h.Store, handlers.Who(c).User, c.Params("id"), c.FormValue("role")); err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "Role changed.")
	return handlers.Redirect(c, "/users")
}

// DeleteUserForm removes a user (never oneself, never the last owner).
func (h *Handlers) DeleteUserForm(c *fiber.Ctx) error {
	if err := accounts.DeleteUser(c.UserContext(), h.Store, handlers.Who(c).User, c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "User deleted.")
	return handlers.Redirect(c, "/users")
}

// APIListUsers is GET /api/users.
func (h *Handlers) APIListUsers(c *fiber.Ctx) error {
	us, err := h.Store.ListUsers(c.UserContext())
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, us, err)
}

// APICreateUser is POST /api/users; a generated password is returned once.
func (h *Handlers) APICreateUser(c *fiber.Ctx) error {
	var in accounts.UserInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	u, generated, err := accounts.CreateUser(c.UserContext(), h.Store, handlers.Who(c).User, in)
	if err != nil {
		return h.Fail(c, err)
	}
	out := fiber.Map{"data": u}
	if generated != "" {
		out["password"] = generated
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}

// APIUpdateUser is PUT /api/users/{id} with {role}.
func (h *Handlers) APIUpdateUser(c *fiber.Ctx) error {
	var in accounts.UserInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if err := accounts.SetRole(c.UserContext(), h.Store, handlers.Who(c).User, c.Params("id"), in.Role); err != nil {
		return h.Fail(c, err)
	}
	u, err := h.Store.CircleUserByID(c.UserContext(), c.Params("id"))
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, u, err)
}

// APIDeleteUser is DELETE /api/users/{id}.
func (h *Handlers) APIDeleteUser(c *fiber.Ctx) error {
	if err := accounts.DeleteUser(c.UserContext(), h.Store, handlers.Who(c).User, c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// MeJSON is GET /api/me: who the request is from and what it may do.
type MeJSON struct {
	ID          string   `json:"id"`
	Email       string   `json:"email"`
	Name        string   `json:"name"`
	Role        string   `json:"role"`
	Token       bool     `json:"token"`
	Scopes      []string `json:"scopes,omitempty"`
	Permissions []string `json:"permissions"`
}

// APIMe is GET /api/me: the caller's user, role and effective permissions (a token's
// within its scopes), so that a client can check a token before it saves it.
func (h *Handlers) APIMe(c *fiber.Ctx) error {
	p := handlers.Who(c)
	perms := make([]string, 0, len(p.Perms))
	for perm, ok := range p.Perms {
		if ok {
			perms = append(perms, perm)
		}
	}
	sort.Strings(perms)
	return c.JSON(fiber.Map{"data": MeJSON{ID: p.User.ID, Email: p.User.Email, Name: p.User.Name, Role: p.User.Role,
		Token: p.TokenID != "", Scopes: p.Scopes, Permissions: perms}})
}

// Handlers are the pages and endpoints of people: users, API tokens, one's own account
// and the tenants of the Tenancy module.
type Handlers struct{ *handlers.Handlers }

// New builds the people's handlers.
func New(h *handlers.Handlers) *Handlers { return &Handlers{Handlers: h} }
