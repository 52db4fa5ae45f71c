package main

import "sync"

// maxCachedForms bounds the form cache; past it the cache starts over.
const maxCachedForms = 1024

// formCache keeps the encoded answer of GET /forms/{id}, the service's most frequent
// read, which changes only through update and delete. Every update or delete
// invalidates after its commit and bumps gen; an answer read from the database is kept
// only when no invalidation happened since the read began, so that a read racing a
// write can never put a stale answer back.
type formCache struct {
	mu    sync.Mutex
	gen   uint64
	forms map[int64][]byte
}

func newFormCache() *formCache { return &formCache{forms: map[int64][]byte{}} }

// get returns the cached answer for id, or the generation to pass to put.
func (c *formCache) get(id int64) (body []byte, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.forms[id], c.gen
}

// put keeps body for id unless the cache was invalidated after gen was read.
func (c *formCache) put(id int64, gen uint64, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.forms) >= maxCachedForms {
		clear(c.forms)
	}
	c.forms[id] = body
}

// invalidate drops id's answer; call it after every update or delete of the form.
func (c *formCache) invalidate(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.forms, id)
}
