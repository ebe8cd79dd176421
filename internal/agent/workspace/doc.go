// Package workspace keeps the agent backend's file tools (write_file,
// read_file, edit_file, list_files) inside a job's workspace directory.
//
// [Resolve] turns a path the model gave into a path under the workspace root,
// refusing absolute paths, "..", NUL bytes and symbolic links that lead out
// of the root, each with an error the model can act on. [Edit] is edit_file's
// exact-match replacement: the old text must occur exactly once.
//
//	p, err := workspace.Resolve(root, call.Path)
//	if err != nil {
//		return toolError(err) // "workspace: absolute path: ..."
//	}
//	updated, err := workspace.Edit(string(content), call.Old, call.New)
package workspace
