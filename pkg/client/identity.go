package client

// Who asks. NATS does not stamp a message with its sender, so where the
// coordinator must know who asks (a cancellation, a task registered or
// deleted) a producer sends on a subject that ends with its NATS user
// name (messages.CancelSubject, messages.TaskSubject), and the server
// lets each producer publish only on its own (docs/security.md). A
// client without an identity asks on the subjects without a name, which
// only autocoder's coordinator role may publish on (the HTTP API, an
// operator acting as admin).

// AsUser is a copy of the client that asks as NATS user name
// (Config.Identity): the user its connection is logged in as.
func (c *Client) AsUser(name string) *Client {
	cp := *c
	cp.cfg.Identity, cp.owner = name, ""
	return &cp
}

// AsAdmin is a copy of the client that asks as the admin (the subjects
// without a name): it may replace or delete any task, if its NATS user
// may publish there.
func (c *Client) AsAdmin() *Client { return c.AsUser("") }

// Identity is the NATS user the client asks as ("" for the admin).
func (c *Client) Identity() string { return c.cfg.Identity }

// ForOwner is a copy of an admin client that registers and deletes tasks
// for owner, which it authenticated itself (the HTTP API: "http:<token
// name>"), with the owner's rights rather than the admin's
// (messages.TaskRequest.Owner). Only the coordinator role may ask so.
func (c *Client) ForOwner(owner string) *Client {
	cp := *c
	cp.cfg.Identity, cp.owner = "", owner
	return &cp
}

// TaskOwner is who an admin client keeps tasks for (ForOwner): "" for
// the admin itself.
func (c *Client) TaskOwner() string { return c.owner }
