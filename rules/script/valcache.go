package script

import "github.com/dop251/goja"

// valCache holds the values a script has read from one object. Most
// objects are read for one to four fields and then dropped (ctx.msg.text),
// so the first few live in the object itself: a map for each was most of
// what reading a field allocated.
type valCache struct {
	n     int
	small [4]struct {
		k string
		v goja.Value
	}
	more map[string]goja.Value
}

func (c *valCache) get(k string) (goja.Value, bool) {
	for i := range c.n {
		if c.small[i].k == k {
			return c.small[i].v, true
		}
	}
	v, ok := c.more[k]
	return v, ok
}

func (c *valCache) put(k string, v goja.Value) {
	for i := range c.n {
		if c.small[i].k == k {
			c.small[i].v = v
			return
		}
	}
	if _, ok := c.more[k]; ok || c.n == len(c.small) {
		if c.more == nil {
			c.more = make(map[string]goja.Value)
		}
		c.more[k] = v
		return
	}
	c.small[c.n].k, c.small[c.n].v = k, v
	c.n++
}

func (c *valCache) del(k string) {
	for i := range c.n {
		if c.small[i].k == k {
			c.n--
			c.small[i] = c.small[c.n]
			c.small[c.n].k, c.small[c.n].v = "", nil
			return
		}
	}
	delete(c.more, k)
}
