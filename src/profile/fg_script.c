/* The flame graph's style sheet and script, written into every SVG by
 * out_flamegraph.c.
 *
 * The script is kept small and ES5.  It reads the frames from their
 * attributes and titles, and only ever sets text content, attributes and
 * styles: it never builds code or markup from a string, and every string
 * in the file came from the target.  It lays the frames out for the
 * window's width, on load and on resize (the file itself is drawn at
 * FG_WIDTH, for viewers that run no script), fits each label to its box
 * by measuring the font the page got, and draws the helper threads the
 * writer marked (data-h) narrow while their box is ticked.  The functions
 * put on window are for tests and for people poking at the console.
 */
#include "profile/fg_script.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char fg_style[] =
	"<style type=\"text/css\"><![CDATA[\n"
	"text{font:12px Verdana,sans-serif;fill:#000}\n"
	"#title{font-size:17px;text-anchor:middle}\n"
	"#subtitle{fill:#555;text-anchor:middle}\n"
	"#frames text{pointer-events:none}\n"
	"#frames rect{rx:2px;ry:2px}\n"
	"#frames g:hover rect{stroke:#000;stroke-width:.5}\n"
	".btn{cursor:pointer}.btn:hover,.btn:hover text{fill:#d00}\n"
	".check .box{fill:#fff;stroke:#555}\n"
	".check .tick{fill:none;stroke:#000;stroke-width:2;visibility:hidden}\n"
	".check[aria-checked=true] .tick{visibility:visible}\n"
	".hide{display:none}.dim rect{fill-opacity:.45}.dim text{fill:#777}\n"
	"#frames.narrow g[data-h] rect{fill-opacity:.5}\n"
	"g[data-mark] rect{stroke:#000;stroke-width:1;stroke-dasharray:4,2}\n"
	"]]></style>\n";

const char fg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"(function(){'use strict';\n"
	"var W0=" STR(FG_WIDTH) ",W=W0,PAD=" STR(FG_XPAD) ",MINW=" STR(FG_MIN_WIDTH) ",NS='http://www.w3.org/2000/svg',ELL='\\u2026',\n"
	" fr=[],total=0,root=null,z=null,re=null,ic=false,narrow=false,hs=[],hk=1,cw={},meas=null,\n"
	" pend=false;\n"
	"function $(id){return document.getElementById(id);}\n"
	"function fmt(n){var p=total?100*n/total:0;\n"
	" return (p>=1||p===0?p.toFixed(1):p.toFixed(2))+'%';}\n"
	"function tick(el,on){el.setAttribute('aria-checked',on?'true':'false');}\n"
	/* A label's width in the font the page got, each character measured once
	 * (between two others: a space alone is no text); kerning only makes
	 * the real text narrower. */
	"function mw(t){meas.textContent=t;return meas.getComputedTextLength();}\n"
	"function cwid(c){var w=cw[c];if(w===undefined)w=cw[c]=mw('n'+c+'n')-mw('nn');\n"
	" return w;}\n"
	"function fit(f,w){var room=w-6,a=f.ch,u=0,i,e;\n"
	" if(!a){a=f.ch=Array.from?Array.from(f.l):f.l.split('');f.lw=0;\n"
	"  for(i=0;i<a.length;i++)f.lw+=cwid(a[i]);}\n"
	" if(f.lw<=room)return f.l;e=cwid(ELL);\n"
	" for(i=0;i<a.length&&u+cwid(a[i])+e<=room;i++)u+=cwid(a[i]);\n"
	" return i<2?'':a.slice(0,i).join('')+ELL;}\n"
	"function init(){var gs=$('frames').getElementsByTagName('g'),i;\n"
	" for(i=0;i<gs.length;i++){var g=gs[i],r=g.getElementsByTagName('rect')[0],\n"
	"  t=g.getElementsByTagName('title')[0].textContent;\n"
	"  var f={g:g,r:r,t:g.getElementsByTagName('text')[0],s:+g.getAttribute('data-s'),\n"
	"   n:+g.getAttribute('data-n'),y:+r.getAttribute('y'),h:g.getAttribute('data-h'),\n"
	"   title:t,full:t.split('\\n')[0].replace(/ \\(\\d+ samples?, [\\d.]+%\\)$/,'')};\n"
	"  f.l=g.getAttribute('data-l')||f.full;g.pf=f;fr.push(f);\n"
	"  if(f.n>total){total=f.n;root=f;}\n"
	"  if(f.h==='1')hs.push(f);}\n"
	" z=root;hk=+$('frames').getAttribute('data-k')||1;narrow=hs.length>0&&hk<1;\n"
	" meas=document.createElementNS(NS,'text');meas.setAttribute('y','-50');\n"
	" meas.style.visibility='hidden';document.documentElement.appendChild(meas);\n"
	" var fs=$('frames'),hb=$('helpers');\n"
	" fs.addEventListener('mouseover',function(e){var f=frameOf(e.target);\n"
	"  $('details').textContent=f?f.title.replace(/\\n/g,'; ')+\n"
	"   (f.h&&narrow?' [a helper thread, drawn narrow]':''):' ';});\n"
	" fs.addEventListener('mouseout',function(){$('details').textContent=' ';});\n"
	" fs.addEventListener('click',function(e){var f=frameOf(e.target);if(f)zoom(f);});\n"
	" $('unzoom').addEventListener('click',unzoom);\n"
	" $('search').addEventListener('click',ask);\n"
	" $('clear').addEventListener('click',clear);\n"
	" $('ic').addEventListener('click',function(){ic=!ic;tick($('ic'),ic);\n"
	"  if(re)search(re.source);});\n"
	" if(hb)hb.addEventListener('click',function(){narrow=!narrow;tick(hb,narrow);layout();});\n"
	" window.addEventListener('keydown',function(e){\n"
	"  if(((e.ctrlKey||e.metaKey)&&e.keyCode===70)||(e.key==='/'&&!e.ctrlKey)){\n"
	"   e.preventDefault();ask();}else if(e.keyCode===27)clear();});\n"
	" window.addEventListener('resize',function(){if(pend)return;pend=true;\n"
	"  (window.requestAnimationFrame||setTimeout)(function(){pend=false;fill();});});\n"
	" window.pystrobeSearch=search;window.pystrobeClear=clear;window.pystrobeReset=unzoom;\n"
	" window.pystrobeZoom=function(g){zoom(g.pf);};\n"
	" window.pystrobeWidth=function(){return W;};\n"
	" fill();}\n"
	/* The page as wide as the window: the drawing's units are pixels, and the
	 * frames are laid out again for the width. */
	"function fill(){var s=document.documentElement,w,l=$('legend');\n"
	" s.removeAttribute('viewBox');s.setAttribute('width','100%');\n"
	" w=Math.floor(s.getBoundingClientRect().width);W=Math.max(MINW,w>0?w:W0);\n"
	" if(W>w)s.setAttribute('width',String(W));\n"
	" $('title').setAttribute('x',W/2);$('subtitle').setAttribute('x',W/2);\n"
	" if(l)l.setAttribute('transform','translate('+(W-W0)/2+',0)');\n"
	" $('right').setAttribute('transform','translate('+(W-W0)+',0)');\n"
	" layout();}\n"
	"function frameOf(el){while(el&&!el.pf)el=el.parentNode;return el?el.pf:null;}\n"
	"function place(f,x,w){f.r.setAttribute('x',x.toFixed(1));\n"
	" f.r.setAttribute('width',w.toFixed(1));f.t.setAttribute('x',(x+3).toFixed(1));\n"
	" f.t.textContent=fit(f,w);}\n"
	"function cls(f,c){if(f.c!==c){f.c=c;f.g.setAttribute('class',c);}}\n"
	/* Where sample s is drawn: in samples, less what the narrow helper
	 * threads before it give up. */
	"function dpos(s){var c=0;if(!narrow)return s;\n"
	" for(var i=0;i<hs.length;i++){var h=hs[i];if(s>h.s)c+=Math.min(s,h.s+h.n)-h.s;}\n"
	" return s-(1-hk)*c;}\n"
	/* Frames are intervals [s, s+n) of samples: the subtree of z lies inside
	 * its interval at or below its row, its ancestors contain it above.
	 * Rows do not move: the frame clicked stays where the pointer is. */
	"function layout(){if(!root)return;\n"
	" var a=dpos(z.s),sc=(W-2*PAD)/((dpos(z.s+z.n)-a)||1);\n"
	" $('frames').setAttribute('class',narrow?'narrow':'');\n"
	" for(var i=0;i<fr.length;i++){var f=fr[i],x;\n"
	"  if(f.s>=z.s&&f.s+f.n<=z.s+z.n&&f.y>=z.y){cls(f,'');x=dpos(f.s);\n"
	"   place(f,PAD+(x-a)*sc,(dpos(f.s+f.n)-x)*sc);}\n"
	"  else if(f.y<z.y&&f.s<=z.s&&f.s+f.n>=z.s+z.n){cls(f,'dim');place(f,PAD,W-2*PAD);}\n"
	"  else cls(f,'hide');}}\n"
	"function zoom(f){z=f;$('unzoom').setAttribute('class','btn');layout();}\n"
	"function unzoom(){z=root;$('unzoom').setAttribute('class','btn hide');layout();}\n"
	"function ask(){var t=window.prompt('Search for a regular expression '+\n"
	"  '(matched against \"function (file:line)\")',re?re.source:'');if(t)search(t);}\n"
	"function search(t){var r;try{r=new RegExp(t,ic?'i':'');}catch(e){\n"
	"  $('matched').textContent='Bad regex';return null;}\n"
	" re=r;var m=[];for(var i=0;i<fr.length;i++){var f=fr[i];\n"
	"  if(r.test(f.l)||r.test(f.full)){f.r.style.fill='#e600e6';m.push(f);}else f.r.style.fill='';}\n"
	/* A match inside a matched ancestor is not counted again: sorted by
	 * start, ancestors first, a match starting inside the last counted one
	 * is nested in it. */
	" m.sort(function(a,b){return a.s-b.s||b.n-a.n||a.y-b.y;});\n"
	" var sum=0,end=-1;\n"
	" for(i=0;i<m.length;i++)if(m[i].s>=end){sum+=m[i].n;end=m[i].s+m[i].n;}\n"
	" var txt='Matched: '+fmt(sum);$('matched').textContent=txt;\n"
	" $('clear').setAttribute('class','btn');return txt;}\n"
	"function clear(){re=null;for(var i=0;i<fr.length;i++)fr[i].r.style.fill='';\n"
	" $('matched').textContent='';$('clear').setAttribute('class','btn hide');}\n"
	"init();})();\n"
	"]]></script>\n";
